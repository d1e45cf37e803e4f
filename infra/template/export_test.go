package template

// ProcessYAML is processYAML, for the external tests.
var ProcessYAML = processYAML
