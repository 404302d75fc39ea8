package move

import (
	"k8s.io/client-go/kubernetes/fake"

	"tug.dev/tug/pkg/deploy"
	"tug.dev/tug/pkg/deploy/deploytest"
	"tug.dev/tug/pkg/lock"
)

const ns = deploytest.Namespace

var (
	newFake         = deploytest.NewFake
	fakeClient      = deploytest.FakeClient
	seedApp         = deploytest.SeedApp
	getApp          = deploytest.GetApp
	listDeployments = deploytest.ListDeployments
	assertNoLease   = deploytest.AssertNoLease
	done            = deploytest.Done
	crashPod        = deploytest.CrashPod
)

func deps(c *fake.Clientset) deploy.Deps {
	return deploy.Deps{Client: c, Namespace: ns, Holder: lock.Holder{User: "alice", PID: 42, Host: "laptop"}}
}
