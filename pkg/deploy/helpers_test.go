package deploy

import (
	"tug.dev/tug/pkg/deploy/deploytest"
)

// The fake cluster of every test here, shared with the packages built on
// pkg/deploy (see deploytest).
const ns = deploytest.Namespace

var (
	newFake         = deploytest.NewFake
	fakeClient      = deploytest.FakeClient
	seedApp         = deploytest.SeedApp
	seedRelease     = deploytest.SeedRelease
	getApp          = deploytest.GetApp
	getRelease      = deploytest.GetRelease
	listDeployments = deploytest.ListDeployments
	assertNoLease   = deploytest.AssertNoLease
	lease           = deploytest.Lease
	getLease        = deploytest.GetLease
	acquire         = deploytest.Acquire
	dep             = deploytest.Deployment
	done            = deploytest.Done
	pod             = deploytest.Pod
	crashPod        = deploytest.CrashPod
	imagePod        = deploytest.ImagePod
)

type (
	recorder = deploytest.Recorder
)
