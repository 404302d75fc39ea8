package main

import (
	"testing"
)

func TestNewHealthcheckCmds(t *testing.T) {
	o, err := parseCmd(t, newHealthcheckSetCmd, "shop", "-p", "web", "--readiness", "http:8080/healthz", "--period", "5", "--timeout-seconds", "2", "--failure-threshold", "4")
	if err != nil || o == nil || o.App != "shop" || o.Process != "web" || o.Healthcheck.Readiness != "http:8080/healthz" ||
		o.Healthcheck.Period != 5 || o.Healthcheck.Timeout != 2 || o.Healthcheck.FailureThreshold != 4 {
		t.Fatalf("set: error %v, options %+v", err, o)
	}
	for _, c := range []struct {
		argv []string
		want string
	}{
		{[]string{"shop", "--readiness", "tcp:80"}, "-p"},
		{[]string{"shop", "-p", "web", "--liveness", "ftp:21"}, "ftp:21"},
		{[]string{"shop", "-p", "web", "--period", "soon"}, `invalid argument "soon"`},
	} {
		o, err := parseCmd(t, newHealthcheckSetCmd, c.argv...)
		wantParseError(t, o, err, c.want)
	}
	u, err := parseCmd(t, newHealthcheckUnsetCmd, "shop", "-p", "worker")
	if err != nil || u == nil || u.App != "shop" || u.Process != "worker" {
		t.Fatalf("unset: error %v, options %+v", err, u)
	}
	u, err = parseCmd(t, newHealthcheckUnsetCmd, "shop")
	wantParseError(t, u, err, "-p")
}
