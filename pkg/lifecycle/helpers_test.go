package lifecycle

import (
	"k8s.io/client-go/kubernetes/fake"

	"tug.dev/tug/pkg/app"
	"tug.dev/tug/pkg/deploy"
	"tug.dev/tug/pkg/deploy/deploytest"
	"tug.dev/tug/pkg/lock"
)

const ns = deploytest.Namespace

var (
	newFake       = deploytest.NewFake
	seedApp       = deploytest.SeedApp
	seedRelease   = deploytest.SeedRelease
	lease         = deploytest.Lease
	assertNoLease = deploytest.AssertNoLease
)

type chanProgress = deploytest.ChanProgress

func deps(c *fake.Clientset) deploy.Deps {
	return deploy.Deps{Client: c, Namespace: ns, Holder: lock.Holder{User: "alice", PID: 42, Host: "laptop"}}
}

// storeDeps are the Deps of s's client and namespace (what export reads).
func storeDeps(s *app.Store) deploy.Deps {
	return deploy.Deps{Client: s.Client, Namespace: s.Namespace}
}
