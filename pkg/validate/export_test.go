package validate

// Compile is compile, for the benchmarks of the external test package.
var Compile = compile
