package binder

func Main(args []string) error { return nil }
