// Package coldstart measures the functions as Lambda runs them: each
// bootstrap's cold start under the runtime interface emulator, beside a
// hello-world bootstrap built the same way, and each bootstrap's size. It
// holds benchmarks only, apart from the rest of infra/local's tests, so
// that `make bench` builds no more than it measures.
package coldstart
