//go:build !profile

package main

// startProfile is a no-op: build with -tags profile for TUG_CPUPROFILE.
func startProfile() func() { return func() {} }
