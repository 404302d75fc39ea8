package main

import (
	"context"
	"errors"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
)

func TestNewLogsCmd(t *testing.T) {
	tests := []struct {
		name    string
		argv    []string
		tail    int64
		since   time.Duration
		wantErr string
	}{
		{name: "the last lines", argv: []string{"shop"}, tail: defaultTail},
		{name: "a window", argv: []string{"shop", "--since", "10m", "-p", "worker", "--timestamps"}, tail: -1, since: 10 * time.Minute},
		{name: "a window with a tail", argv: []string{"shop", "--since", "1h", "--tail", "5"}, tail: 5, since: time.Hour},
		{name: "a unit's previous", argv: []string{"shop", "-u", "shop-web-1", "--previous"}, tail: defaultTail},
		{name: "following the previous", argv: []string{"shop", "--previous", "-f"}, wantErr: "cannot be followed"},
		{name: "bad tail", argv: []string{"shop", "--tail", "-2"}, wantErr: "--tail must be -1 (all) or more"},
		{name: "bad since", argv: []string{"shop", "--since", "yesterday"}, wantErr: `--since "yesterday"`},
		{name: "bad unit", argv: []string{"shop", "-u", "Web_1"}, wantErr: "Web_1"},
		{name: "bad app", argv: []string{"Shop"}, wantErr: `"Shop"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, err := parseCmd(t, newLogsCmd, tt.argv...)
			if tt.wantErr != "" {
				wantParseError(t, o, err, tt.wantErr)
				return
			}
			if err != nil || o == nil || o.App != "shop" || o.Tail != tt.tail || o.Since != tt.since {
				t.Fatalf("error %v, options %+v", err, o)
			}
		})
	}
}

func TestRunLogsWithoutClient(t *testing.T) {
	o := &logsOptions{Client: func() (kubernetes.Interface, error) { return nil, errors.New("no kubeconfig") }}
	if err := runLogs(context.Background(), o); err == nil || err.Error() != "no kubeconfig" {
		t.Errorf("error %v", err)
	}
}
