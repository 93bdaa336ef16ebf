package exec

// Check reports whether the tool's program is there to run: a path that
// exists, is no directory and is executable (relative paths resolve
// against Config.Dir), or a bare name found in PATH, exactly as a call
// resolves it. The error is of class business and says what was tried.
func (t *Tool) Check() error {
	_, err := t.resolve()
	return err
}
