package cron

import "time"

type every time.Duration

func (e every) Next(t time.Time) time.Time { return t.Add(time.Duration(e)) }
