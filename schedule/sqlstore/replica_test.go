package sqlstore_test

import "errors"

func replica() error { return errors.New("replica: not built yet") }
