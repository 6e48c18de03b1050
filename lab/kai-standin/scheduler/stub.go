package scheduler

func Main(args []string) error { return nil }
