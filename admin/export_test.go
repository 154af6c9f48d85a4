package admin

// SetReadHook sets testHookRead, for the tests of package admin_test; nil
// removes it.
func SetReadHook(f func()) { testHookRead = f }
