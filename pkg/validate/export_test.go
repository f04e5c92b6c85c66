package validate

// ValidatorSchema is the schema Default compiles, for the tests and
// benchmarks of the external test package.
var ValidatorSchema = validatorSchema
