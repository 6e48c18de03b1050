package podgroupctl

func Main(args []string) error { return nil }
