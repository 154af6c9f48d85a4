package cron

// SetHoldHook sets testHookHold, for the tests of package cron_test; nil
// removes it.
func SetHoldHook(f func(where, name string)) { testHookHold = f }

// SetSortHook sets testHookSort, for the tests of package cron_test; nil
// removes it.
func SetSortHook(f func()) { testHookSort = f }
