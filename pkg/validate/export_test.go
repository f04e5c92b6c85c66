package validate

// Compile is compile, and ValidatorSchema the schema Default compiles, for the
// tests and benchmarks of the external test package.
var (
	Compile         = compile
	ValidatorSchema = validatorSchema
)
