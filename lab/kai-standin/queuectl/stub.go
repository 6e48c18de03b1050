package queuectl

func Main(args []string) error { return nil }
