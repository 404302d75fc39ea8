package app

import (
	"strconv"

	"tug.dev/tug/pkg/inputerr"
	"tug.dev/tug/pkg/text"
)

// The platform's variables: every unit gets them from tug, like Heroku's
// DYNO or tsuru's TSURU_APPNAME, so a process can tell where it runs. They
// are set in the container's env, which wins over the config's envFrom,
// and the config may not name them, so they cannot be overridden by
// accident.
//
// PORT is the exception: tug sets it in web units (DefaultPort), and the
// config may set it to say where the app listens, as a Heroku app reads
// the PORT its platform picks but here the app picks it. tug then uses it
// for the container's port, its readiness check and the Service's target
// (pkg/render webPort), so it must be a port number.
const (
	EnvApp     = "TUG_APP"     // the app's name
	EnvProcess = "TUG_PROCESS" // the process type: web, worker, ...
	EnvRelease = "TUG_RELEASE" // the release number the unit runs
)

// EnvPort is the web process's port; see above.
const EnvPort = "PORT"

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
		return inputerr.Errorf("%s is set by tug in every unit (%s) and cannot be configured; choose another name", name, what)
	}
	return nil
}

// ValidateEnvValue checks a config value tug reads itself: PORT must be a
// port number.
func ValidateEnvValue(name, value string) error {
	if name != EnvPort {
		return nil
	}
	if p, err := strconv.Atoi(value); err != nil || p < 1 || p > 65535 {
		return inputerr.Errorf("invalid PORT %q: PORT is the port the web process listens on (tug points its container port, readiness check and Service at it); give a number from 1 to 65535, or unset it for the default %d", text.Excerpt(value), DefaultPort)
	}
	return nil
}
