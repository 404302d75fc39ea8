// Command tug is a platform-as-a-service on the command line, talking
// directly to Kubernetes with the user's kubeconfig.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/klog/v2"

	"tug.dev/tug/pkg/cli"
)

func main() {
	os.Exit(run(os.Args))
}

func run(args []string) int {
	defer startProfile()()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// After the first signal, stop catching: a second Ctrl-C kills tug even if
	// cleanup hangs.
	go func() {
		<-ctx.Done()
		stop()
	}()

	quietUnhandledErrors()
	ios := cli.System()
	f := cli.NewFactory(ios, commandName(args[0]))
	root := newRootCmd(f)
	root.SetArgs(args[1:])
	cmd, err := root.ExecuteContextC(ctx)
	wholeLine(err, cmd, args[1:])
	writeErrorObject(ios.Out, cmd, err)
	return exitCode(ctx, ios.ErrOut, cmd, err)
}

// quietUnhandledErrors keeps client-go's errors that no caller gets (a
// stream cut by Ctrl-C mid-build) out of the terminal: they printed as raw
// "E1207 ... UnhandledError" lines after tug had said what happened. With
// --v=2 or more they are still logged, for debugging.
func quietUnhandledErrors() {
	utilruntime.ErrorHandlers = []utilruntime.ErrorHandler{
		func(_ context.Context, err error, msg string, keysAndValues ...any) {
			klog.V(2).ErrorS(err, msg, keysAndValues...)
		},
	}
}
