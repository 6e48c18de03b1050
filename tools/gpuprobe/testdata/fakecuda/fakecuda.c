// A fake CUDA driver (libcuda) for testing gpuprobe's cuda build on machines without a
// GPU. "Device" memory is host memory; cuLaunchKernel runs the probe's matmul kernel on
// the CPU thread by thread, with the same grid/block arithmetic and bounds check as the
// PTX, so the host side (argument marshalling, sizes, launch geometry, copies) is
// exercised for real. It proves nothing about the PTX itself (ptxas checks that).
//
// Environment: FAKECUDA_MODE = ok (default) | nodevice | wrong | launchfail
//              FAKECUDA_MEM_MIB = device memory in MiB (default 256)
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef int CUresult;
typedef unsigned long long CUdeviceptr;

static size_t used;
static int inited;

static const char *mode(void) {
	const char *m = getenv("FAKECUDA_MODE");
	return m ? m : "ok";
}

static size_t capacity(void) {
	const char *m = getenv("FAKECUDA_MEM_MIB");
	return (size_t)(m ? atol(m) : 256) << 20;
}

CUresult cuInit(unsigned int flags) {
	(void)flags;
	if (strcmp(mode(), "nodevice") == 0) return 100; // CUDA_ERROR_NO_DEVICE
	inited = 1;
	return 0;
}
CUresult cuGetErrorName(CUresult r, const char **s) {
	switch (r) {
	case 2: *s = "CUDA_ERROR_OUT_OF_MEMORY"; return 0;
	case 100: *s = "CUDA_ERROR_NO_DEVICE"; return 0;
	case 719: *s = "CUDA_ERROR_LAUNCH_FAILED"; return 0;
	default: return 1;
	}
}
CUresult cuDriverGetVersion(int *v) { *v = 12090; return 0; }
CUresult cuDeviceGetCount(int *n) { *n = inited ? 1 : 0; return inited ? 0 : 3; }
CUresult cuDeviceGet(int *d, int ordinal) { if (ordinal != 0) return 101; *d = 0; return 0; }
CUresult cuDeviceGetName(char *name, int len, int d) {
	(void)d;
	strncpy(name, "Fake GPU (kaiops test driver)", (size_t)len - 1);
	name[len - 1] = 0;
	return 0;
}
CUresult cuDeviceGetUuid(unsigned char *u, int d) {
	(void)d;
	for (int i = 0; i < 16; i++) u[i] = (unsigned char)(0x10 + i);
	return 0;
}
CUresult cuDeviceTotalMem_v2(size_t *b, int d) { (void)d; *b = capacity(); return 0; }
CUresult cuDevicePrimaryCtxRetain(void **c, int d) { (void)d; *c = (void *)&used; return 0; }
CUresult cuDevicePrimaryCtxRelease_v2(int d) { (void)d; return 0; }
CUresult cuCtxSetCurrent(void *c) { (void)c; return 0; }
CUresult cuCtxSynchronize(void) { return 0; }
CUresult cuMemGetInfo_v2(size_t *f, size_t *t) { *t = capacity(); *f = capacity() - used; return 0; }

// each block carries its size in front of it
CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t bytes) {
	if (bytes == 0) return 1;
	if (used + bytes > capacity()) return 2;
	size_t *blk = malloc(bytes + 16);
	if (!blk) return 2;
	blk[0] = bytes;
	used += bytes;
	*p = (CUdeviceptr)(uintptr_t)(blk + 2);
	return 0;
}
CUresult cuMemFree_v2(CUdeviceptr p) {
	size_t *blk = (size_t *)(uintptr_t)p - 2;
	used -= blk[0];
	free(blk);
	return 0;
}
CUresult cuMemsetD8_v2(CUdeviceptr p, unsigned char v, size_t n) {
	// touching large "device" blocks would only cost host memory; the size is checked
	if (n <= (64u << 20)) memset((void *)(uintptr_t)p, v, n);
	return 0;
}
CUresult cuMemcpyHtoD_v2(CUdeviceptr d, const void *s, size_t n) { memcpy((void *)(uintptr_t)d, s, n); return 0; }
CUresult cuMemcpyDtoH_v2(void *d, CUdeviceptr s, size_t n) { memcpy(d, (void *)(uintptr_t)s, n); return 0; }

static char module_tag;
CUresult cuModuleLoadData(void **m, const void *image) {
	if (strstr((const char *)image, ".entry kaiops_matmul") == NULL) return 200; // INVALID_IMAGE
	*m = &module_tag;
	return 0;
}
CUresult cuModuleGetFunction(void **f, void *m, const char *name) {
	(void)m;
	if (strcmp(name, "kaiops_matmul") != 0) return 500; // NOT_FOUND
	*f = &module_tag;
	return 0;
}
CUresult cuModuleUnload(void *m) { (void)m; return 0; }

CUresult cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
	unsigned bz, unsigned shmem, void *stream, void **params, void **extra) {
	(void)f; (void)shmem; (void)stream; (void)extra;
	if (strcmp(mode(), "launchfail") == 0) return 719;
	if (gz != 1 || bz != 1 || params == NULL) return 1;
	const float *a = (const float *)(uintptr_t)*(CUdeviceptr *)params[0];
	const float *b = (const float *)(uintptr_t)*(CUdeviceptr *)params[1];
	float *c = (float *)(uintptr_t)*(CUdeviceptr *)params[2];
	unsigned n = *(unsigned *)params[3];
	for (unsigned byi = 0; byi < gy; byi++)
		for (unsigned bxi = 0; bxi < gx; bxi++)
			for (unsigned ty = 0; ty < by; ty++)
				for (unsigned tx = 0; tx < bx; tx++) {
					unsigned col = bxi * bx + tx, row = byi * by + ty;
					if (col >= n || row >= n) continue;
					float acc = 0;
					for (unsigned k = 0; k < n; k++) acc = __builtin_fmaf(a[row * n + k], b[k * n + col], acc);
					c[row * n + col] = acc;
				}
	if (strcmp(mode(), "wrong") == 0) c[n * n / 2] += 0.01f;
	return 0;
}
