package app

import (
	"strconv"

	"tug.dev/tug/pkg/usage"
)

// The platform's variables: every unit gets them from tug, like Heroku's
// DYNO or tsuru's TSURU_APPNAME, so a process can tell where it runs. They
// are set in the container's env, which wins over the config's envFrom,
// and the config may not name them, so they cannot be overridden by
// accident. PORT (the web process's) is documented with the web process.
const (
	EnvApp     = "TUG_APP"     // the app's name
	EnvProcess = "TUG_PROCESS" // the process type: web, worker, ...
	EnvRelease = "TUG_RELEASE" // the release number the unit runs
)

var platformEnv = map[string]string{
	EnvApp:     "the app's name",
	EnvProcess: "the unit's process type",
	EnvRelease: "the release the unit runs",
}

// PlatformEnv is the platform's variables for a unit of proc in release r.
func PlatformEnv(appName, proc string, release int) map[string]string {
	return map[string]string{EnvApp: appName, EnvProcess: proc, EnvRelease: strconv.Itoa(release)}
}

// checkNotPlatform refuses a config name that tug sets itself.
func checkNotPlatform(name string) error {
	if what, ok := platformEnv[name]; ok {
		return usage.Errorf("%s is set by tug in every unit (%s) and cannot be configured; choose another name", name, what)
	}
	return nil
}
