package admin

// SetReadHook sets testHookRead, for the tests of package admin_test; nil
// removes it.
func SetReadHook(f func()) { testHookRead = f }

// SetCensusHook sets testHookCensus, for the tests of package admin_test;
// nil removes it.
func SetCensusHook(f func()) { testHookCensus = f }
