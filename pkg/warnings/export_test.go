package warnings

// MLBatchPriorityClasses is mlbatchPriorityClasses, for the tests of the
// external test package.
var MLBatchPriorityClasses = mlbatchPriorityClasses
