package warnings

// MLBatchPriorityClasses is mlbatchPriorityClasses, for the tests of the
// external test package.
var MLBatchPriorityClasses = mlbatchPriorityClasses

// MemoryKeys is memoryKeys, for the tests of the external test package.
var MemoryKeys = memoryKeys
