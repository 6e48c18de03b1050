module kaiops.dev/tools/gpuprobe

go 1.25
