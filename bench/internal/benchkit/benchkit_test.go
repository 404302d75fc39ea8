//go:build unix

package benchkit

import (
	"testing"
	"time"
)

func TestRequests(t *testing.T) {
	stderr := []byte(`trace: 06:11:59.789 PATCH /api/v1/namespaces/x/secrets/s?fieldManager=tug 200 OK 12ms
trace: 06:11:59.790 GET /api/v1/namespaces/x/pods?labelSelector=a&watch=true 200 OK 1ms
I1201 06:00:00.000000    1 round_trippers.go:632] "Response" verb="GET" url="https://10.0.0.1:6443/api/v1/nodes?limit=500" status="200 OK" milliseconds=3
I1201 06:00:00.000000    1 round_trippers.go:553] GET https://10.0.0.1:6443/api/v1/namespaces/x/pods?limit=500 200 OK in 3 milliseconds
a log line that mentions GET /api/v1/nodes 200
`)
	total, by := Requests(stderr)
	if total != 4 || by["PATCH /api/v1/namespaces/x/secrets/s"] != 1 || by["WATCH /api/v1/namespaces/x/pods"] != 1 ||
		by["GET /api/v1/nodes"] != 1 || by["GET /api/v1/namespaces/x/pods"] != 1 {
		t.Fatalf("%d requests: %v", total, by)
	}
}

func TestMsList(t *testing.T) {
	if got := MsList([]time.Duration{1500 * time.Microsecond, 2 * time.Second}); got != "1, 2000 ms" {
		t.Errorf("MsList = %q", got)
	}
}
