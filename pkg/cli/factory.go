package cli

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"runtime"
	"sync"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"tug.dev/tug/pkg/kube"
	"tug.dev/tug/pkg/progress"
	"tug.dev/tug/pkg/version"
)

// Client-side rate limits. client-go's defaults (5 QPS, burst 10) make a
// command that touches a few dozen objects wait on itself; the API server's
// own priority and fairness is the real protection.
const (
	clientQPS   = 50
	clientBurst = 100
)

// Factory hands commands what they need, built on first use: nothing here
// talks to the cluster or reads the kubeconfig until a command's RunE asks.
type Factory struct {
	IOStreams *IOStreams
	// ConfigFlags are kubectl's flags for reaching a cluster (--kubeconfig,
	// --context, -n, ...), bound to the root command.
	ConfigFlags *ConfigFlags
	// CommandName is what the user typed to run tug: "tug", or "kubectl tug"
	// in plugin mode. Messages that say what to run next use it.
	CommandName string
	// Verbosity is -v: at 6 and above every API request is logged to stderr
	// (method, URL, status, latency; never a body or a header's value).
	Verbosity int

	// The constructors below are fields so tests can replace them with fakes.
	RESTConfigFunc func() (*rest.Config, error)
	KubeClientFunc func() (kubernetes.Interface, error)
	PrompterFunc   func() Prompter

	// Gate, when set, is asked once, with the first client the command
	// makes, whether it may go on (the access level it needs: cmd/tug's
	// levels.go). Asking with the first client, not before the run, keeps
	// bad input failing before anything reaches the cluster.
	Gate     func(kubernetes.Interface) error
	gateOnce sync.Once
	gateErr  error
}

// NewFactory returns a Factory whose clients come from the kubeconfig as
// selected by ConfigFlags.
func NewFactory(ios *IOStreams, commandName string) *Factory {
	f := &Factory{
		IOStreams:   ios,
		ConfigFlags: NewConfigFlags(),
		CommandName: commandName,
	}
	f.RESTConfigFunc = sync.OnceValues(f.loadRESTConfig)
	f.KubeClientFunc = sync.OnceValues(func() (kubernetes.Interface, error) {
		cfg, err := f.RESTConfig()
		if err != nil {
			return nil, err
		}
		return kubernetes.NewForConfig(cfg)
	})
	f.PrompterFunc = sync.OnceValue(func() Prompter { return newHuhPrompter(ios) })
	return f
}

// TraceVerbosity is the -v level from which requests are logged.
const TraceVerbosity = 6

// AddFlags adds the Factory's own global flags: -v.
func (f *Factory) AddFlags(fs *pflag.FlagSet) {
	fs.IntVarP(&f.Verbosity, "v", "v", 0, "Log level: 1 or more notes how the app's Gateway was found; 6 or more logs every API request (method, URL, status, latency; never a body or a header value) to stderr")
}

// RESTConfig is the client configuration for the selected cluster and user.
func (f *Factory) RESTConfig() (*rest.Config, error) { return f.RESTConfigFunc() }

// KubeClient is a typed clientset for the selected cluster.
func (f *Factory) KubeClient() (kubernetes.Interface, error) {
	c, err := f.KubeClientFunc()
	if err != nil || f.Gate == nil {
		return c, err
	}
	f.gateOnce.Do(func() { f.gateErr = f.Gate(c) })
	if f.gateErr != nil {
		return nil, f.gateErr
	}
	return c, nil
}

// Prompter asks the user questions; see CanPrompt before using it.
func (f *Factory) Prompter() Prompter { return f.PrompterFunc() }

// Namespace is -n if given, else the kubeconfig context's namespace, else "default".
func (f *Factory) Namespace() (string, error) {
	ns, _, err := f.ConfigFlags.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return "", kube.TranslateError(err)
	}
	return ns, nil
}

// checkKubeconfigExists fails when there is nothing to connect to, so the
// user reads "no kubeconfig found" instead of what client-go makes of an
// empty config (kubectl famously tries http://localhost:8080).
func (f *Factory) checkKubeconfigExists() error {
	if f.ConfigFlags.Server != "" {
		return nil
	}
	if os.Getenv("KUBERNETES_SERVICE_HOST") != "" {
		return nil // in a pod: client-go uses the service account
	}
	raw, err := f.ConfigFlags.ToRawKubeConfigLoader().RawConfig()
	if err != nil {
		return kube.TranslateError(err)
	}
	if len(raw.Clusters) == 0 {
		return kube.TranslateError(clientcmd.ErrEmptyConfig)
	}
	return nil
}

// ContextName is the kubeconfig context in use: --context, else the
// kubeconfig's current context.
func (f *Factory) ContextName() (string, error) {
	if c := f.ConfigFlags.Context; c != "" {
		return c, nil
	}
	raw, err := f.ConfigFlags.ToRawKubeConfigLoader().RawConfig()
	if err != nil {
		return "", kube.TranslateError(err)
	}
	return raw.CurrentContext, nil
}

// Progress returns a reporter that writes to stderr.
func (f *Factory) Progress() progress.Reporter { return NewProgress(f.IOStreams) }

func (f *Factory) loadRESTConfig() (*rest.Config, error) {
	if err := f.ConfigFlags.Validate(); err != nil {
		return nil, err
	}
	if err := f.checkKubeconfigExists(); err != nil {
		return nil, err
	}
	cfg, err := f.ConfigFlags.ToRESTConfig()
	if err != nil {
		return nil, kube.TranslateError(err)
	}
	cfg = rest.CopyConfig(cfg)
	cfg.QPS = clientQPS
	cfg.Burst = clientBurst
	v := version.Get()
	cfg.UserAgent = fmt.Sprintf("tug/%s (%s/%s)", v.Version, runtime.GOOS, runtime.GOARCH)
	// Deprecation warnings from the API server go to stderr once each, instead
	// of through klog.
	cfg.WarningHandler = rest.NewWarningWriter(f.IOStreams.ErrOut, rest.WarningWriterOptions{
		Deduplicate: true,
		Color:       f.IOStreams.ErrColorEnabled(),
	})
	timeout, err := parseRequestTimeout(f.ConfigFlags.RequestTimeout)
	if err != nil {
		return nil, err
	}
	notice := newWaitNotice(f.IOStreams, cfg.Host)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return newRequestGuard(rt, timeout, notice) })
	// -v 6 (or TUG_TRACE_REQUESTS=1, for benchmarks that count requests)
	// logs every API request to stderr, as kubectl's -v=6 does.
	if f.Verbosity >= TraceVerbosity || os.Getenv("TUG_TRACE_REQUESTS") != "" {
		w := f.IOStreams.ErrOut
		cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return &traceTransport{next: rt, w: w} })
	}
	return cfg, nil
}

type traceTransport struct {
	next http.RoundTripper
	w    io.Writer
	mu   sync.Mutex
}

func (t *traceTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	start := time.Now()
	resp, err := t.next.RoundTrip(req)
	status := "error"
	if err == nil {
		status = resp.Status
	}
	t.mu.Lock()
	fmt.Fprintf(t.w, "trace: %s %s %s %s %s\n", start.Format("15:04:05.000"), req.Method, req.URL.RequestURI(), status, time.Since(start).Round(time.Millisecond))
	t.mu.Unlock()
	return resp, err
}
