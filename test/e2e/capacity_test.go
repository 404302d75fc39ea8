package e2e

// The cluster the e2e tests run on is not empty: `make demo` leaves its
// apps running (README: make demo, then make test), other test runs share
// it, and this run's tests run side by side. A test that needs a node to be
// full or to have room sizes its requests from what the nodes have free
// when it starts, never from constants.
