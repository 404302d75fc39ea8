package route_test

// ns is the namespace of the tests' apps.
const ns = "dev"
