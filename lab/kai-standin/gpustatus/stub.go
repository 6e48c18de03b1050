package gpustatus

func Main(args []string) error { return nil }
