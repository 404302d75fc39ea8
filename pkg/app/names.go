// Package app holds tug's app model: apps, releases, config (env),
// processes and units, and how each is stored in the cluster.
package app

import (
	"regexp"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	"tug.dev/tug/pkg/inputerr"
)

// Length limits keep every derived name valid: a process's Deployment is
// "<app>-<process>" (at most 46), its pods add "-<10>-<5>" and stay within a
// 63-character hostname, and Service names are DNS-1035 labels.
const (
	MaxAppNameLen     = 30
	MaxProcessNameLen = 15
)

var (
	appNameRE = regexp.MustCompile(`^[a-z]([-a-z0-9]*[a-z0-9])?$`)
	// No '-' in process names: "<app>-<process>" must name one Deployment
	// only ("shop"+"api-web" and "shop-api"+"web" would collide).
	processNameRE = regexp.MustCompile(`^[a-z][a-z0-9]*$`)
)

// reserved names would be confusing or collide with the system's own.
var reserved = map[string]bool{"tug": true, "kubernetes": true, "default": true, "system": true, "all": true}

// ValidateName checks an app name; the error, an input error, says what a
// valid one is.
func ValidateName(name string) error {
	switch {
	case name == "":
		return inputerr.Errorf("app name is empty")
	case len(name) > MaxAppNameLen:
		return inputerr.Errorf("app name %q is %d characters; the limit is %d", name, len(name), MaxAppNameLen)
	case !appNameRE.MatchString(name):
		return inputerr.Errorf("invalid app name %q: use lower-case letters, digits and '-', starting with a letter and ending with a letter or digit", name)
	case reserved[name] || strings.HasPrefix(name, "kube-"):
		return inputerr.Errorf("app name %q is reserved; choose another", name)
	}
	return nil
}

// RunProcess is what one-off run pods (tug run) are listed as among an
// app's units; no process may take the name.
const RunProcess = "run"

// kindRun is run pods' tug.dev/kind (pkg/session.KindRun, which imports this
// package).
const kindRun = "run"

// ValidateProcessName checks a process type name such as "web" or "worker".
func ValidateProcessName(name string) error {
	switch {
	case name == "":
		return inputerr.Errorf("process name is empty")
	case len(name) > MaxProcessNameLen:
		return inputerr.Errorf("process name %q is %d characters; the limit is %d", name, len(name), MaxProcessNameLen)
	case !processNameRE.MatchString(name):
		return inputerr.Errorf("invalid process name %q: use lower-case letters and digits, starting with a letter", name)
	case name == RunProcess:
		return inputerr.Errorf("process name %q is reserved for one-off runs", name)
	}
	return nil
}

// ValidateAppProcess checks an app name and the process named with -p;
// required says whether -p must be given.
func ValidateAppProcess(appName, proc string, required bool) error {
	if err := ValidateName(appName); err != nil {
		return err
	}
	if proc == "" {
		if required {
			return inputerr.Errorf("which process? give -p PROCESS")
		}
		return nil
	}
	return ValidateProcessName(proc)
}

// ValidateUnitName checks a unit named on the command line: a pod's name.
func ValidateUnitName(name string) error {
	if name == "" {
		return inputerr.Errorf("unit name is empty")
	}
	if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
		return inputerr.Errorf("invalid unit name %q: a unit is a pod such as shop-web-6d9c7b8f5-x2k9q; see 'tug unit list'", name)
	}
	return nil
}
