package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"tug.dev/tug/pkg/access"
	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/cli"
	"tug.dev/tug/pkg/inputerr"
)

// accessTokenOptions are `tug access token`.
type accessTokenOptions struct {
	IO         *cli.IOStreams
	Target     func() (*app.Store, error)
	RESTConfig func() (*rest.Config, error)

	Token  access.TokenOptions
	Role   string
	File   string
	Output cli.OutputOptions
}

// tokenResult is `tug access token -o json|yaml` (docs/output.md).
type tokenResult struct {
	*access.Token
	File       string `json:"file,omitempty"`
	Kubeconfig string `json:"kubeconfig,omitempty"`
}

func newAccessTokenCmd(f *cli.Factory, runF func(context.Context, *accessTokenOptions) error) *cobra.Command {
	o := &accessTokenOptions{IO: f.IOStreams, Target: storeFor(f), RESTConfig: f.RESTConfig}
	cmd := &cobra.Command{
		Use:         "token NAME --role LEVEL [--ttl D] [--rotate] [-f FILE]",
		Annotations: atLevel(access.Admin, argsAre(argNewName)),
		Short:       "Make a CI identity with a level and print a kubeconfig holding its token",
		Long: `Make the service account tug-ci-NAME, grant it a level in the namespace, and
print a kubeconfig holding a token for it from the TokenRequest API, which
expires after --ttl (10m or more). The kubeconfig goes to stdout, for a CI
secret; nothing is written to disk unless -f names a file (written 0600).

Releases and events made with the token name it (system:serviceaccount:
NAMESPACE:tug-ci-NAME). --rotate remakes the identity, so every token issued
before is refused, and prints a new one; 'tug access remove ci:NAME' revokes
them all.`,
		Example: `  tug access token deploy --role developer --ttl 24h > ci.kubeconfig
  tug access token deploy --rotate -f ci.kubeconfig`,
		Args: cli.ExactArgs("NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Token.Name = args[0]
			if o.Role != "" {
				l, err := access.ParseLevel(o.Role)
				if err != nil {
					return err
				}
				o.Token.Level = l
			}
			if err := o.Token.Validate(); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return runAccessToken(cmd.Context(), o)
		},
	}
	cmd.Flags().StringVar(&o.Role, "role", "", "The level to grant: viewer, developer, operator or admin (with --rotate: the level it has)")
	cmd.Flags().DurationVar(&o.Token.TTL, "ttl", 24*time.Hour, "How long the token is valid (10m or more)")
	cmd.Flags().BoolVar(&o.Token.Rotate, "rotate", false, "Refuse every token issued before, and issue a new one")
	cmd.Flags().StringVarP(&o.File, "file", "f", "", "Write the kubeconfig to FILE instead of stdout")
	cli.AddOutputFlags(cmd, &o.Output)
	return cmd
}

func runAccessToken(ctx context.Context, o *accessTokenOptions) error {
	cfg, err := o.RESTConfig()
	if err != nil {
		return err
	}
	c := access.Cluster{Server: cfg.Host, CAData: cfg.CAData, Insecure: cfg.Insecure, TLSName: cfg.ServerName}
	if len(c.CAData) == 0 && cfg.CAFile != "" {
		if c.CAData, err = os.ReadFile(cfg.CAFile); err != nil {
			return fmt.Errorf("reading the cluster's CA %s: %w", cfg.CAFile, err)
		}
	}
	if o.File != "" {
		if st, err := os.Stat(o.File); err == nil && st.IsDir() {
			return inputerr.Errorf("-f %s is a directory; name a file", o.File)
		}
	}
	s, err := o.Target()
	if err != nil {
		return err
	}
	tok, err := access.IssueToken(ctx, s.Client, s.Namespace, o.Token)
	if err != nil {
		return whoRefused(ctx, s, err)
	}
	kc, err := clientcmd.Write(*access.Kubeconfig(c, tok))
	if err != nil {
		return err
	}
	res := tokenResult{Token: tok}
	if o.File != "" {
		if err := writePrivate(o.File, kc); err != nil {
			return fmt.Errorf("the token was issued but not written: %w", err)
		}
		res.File = o.File
	} else {
		res.Kubeconfig = string(kc)
	}
	if tok.Warning != "" {
		fmt.Fprintf(o.IO.ErrOut, "warning: %s\n", tok.Warning)
	}
	fmt.Fprintf(o.IO.ErrOut, "CI token %s (%s, %s in namespace %q) expires %s\n", tok.Name, tok.Subject, tok.Level, tok.Namespace, tok.ExpiresAt.Format(time.RFC3339))
	return o.Output.Print(o.IO, res, func() error {
		if o.File != "" {
			_, err := fmt.Fprintf(o.IO.ErrOut, "kubeconfig written to %s\n", o.File)
			return err
		}
		_, err := o.IO.Out.Write(kc)
		return err
	})
}

// writePrivate writes data to path readable by its owner alone: a new file
// (CreateTemp makes it 0600) renamed over path, so a file that was there,
// whatever its mode, is replaced rather than written into.
func writePrivate(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+"-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // nothing left behind on failure; gone after the rename
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
