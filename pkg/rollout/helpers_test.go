package rollout

import "tug.dev/tug/pkg/deploy/deploytest"

const ns = deploytest.Namespace

var (
	fakeClient = deploytest.FakeClient
	dep        = deploytest.Deployment
	done       = deploytest.Done
	pod        = deploytest.Pod
	imagePod   = deploytest.ImagePod
	waiting    = deploytest.Waiting
	terminated = deploytest.Terminated
	running    = deploytest.Running
)

type (
	chanProgress = deploytest.ChanProgress
	recorder     = deploytest.Recorder
)
