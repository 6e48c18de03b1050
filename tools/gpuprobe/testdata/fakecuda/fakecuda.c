// A fake CUDA driver (libcuda) for testing gpuprobe's cuda build on machines without a
// GPU. "Device" memory is host memory; cuLaunchKernel runs the probe's matmul kernel on
// the CPU thread by thread, with the same grid/block arithmetic and bounds check as the
// PTX, so the host side (argument marshalling, sizes, launch geometry, copies) is
// exercised for real. It proves nothing about the PTX itself (ptxas checks that).
//
// Environment: FAKECUDA_MODE = ok (default) | nodevice | wrong | launchfail
//              FAKECUDA_MEM_MIB = device memory in MiB (default 256)
//              FAKECUDA_SHARED_FILE = a file that holds the bytes in use, so that several
//                processes share one "device" (read and written under flock): two probes
//                then contend for its memory as on a real GPU. Unset: each process has its own.
//              FAKECUDA_UUID_PER_PROCESS = 1: the device UUID carries the process id, so two
//                processes see two different devices (tests the "same device" check).
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

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
	const char *per = getenv("FAKECUDA_UUID_PER_PROCESS");
	if (per && strcmp(per, "1") == 0) {
		unsigned pid = (unsigned)getpid();
		for (int i = 0; i < 4; i++) u[12 + i] = (unsigned char)(pid >> (8 * i));
	}
	return 0;
}
CUresult cuDeviceTotalMem_v2(size_t *b, int d) { (void)d; *b = capacity(); return 0; }

// shared_add adds delta bytes to the device's use; 2 (out of memory) when it would exceed the
// capacity. With FAKECUDA_SHARED_FILE the use is the file's, across processes; else this one's.
static int shared_add(long long delta, size_t *now) {
	const char *path = getenv("FAKECUDA_SHARED_FILE");
	if (!path || !*path) {
		if (delta > 0 && used + (size_t)delta > capacity()) return 2;
		used = (size_t)((long long)used + delta);
		if (now) *now = used;
		return 0;
	}
	int fd = open(path, O_RDWR | O_CREAT, 0600);
	if (fd < 0) return 1;
	flock(fd, LOCK_EX);
	char buf[32] = {0};
	ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
	long long cur = n > 0 ? atoll(buf) : 0;
	int rc = 0;
	if (delta > 0 && (size_t)(cur + delta) > capacity()) {
		rc = 2;
	} else {
		cur += delta;
		if (cur < 0) cur = 0;
		int len = snprintf(buf, sizeof buf, "%lld\n", cur);
		if (ftruncate(fd, 0) != 0 || pwrite(fd, buf, (size_t)len, 0) != len) rc = 1;
	}
	if (now) *now = (size_t)cur;
	flock(fd, LOCK_UN);
	close(fd);
	return rc;
}
CUresult cuDevicePrimaryCtxRetain(void **c, int d) { (void)d; *c = (void *)&used; return 0; }
CUresult cuDevicePrimaryCtxRelease_v2(int d) { (void)d; return 0; }
CUresult cuCtxSetCurrent(void *c) { (void)c; return 0; }
CUresult cuCtxSynchronize(void) { return 0; }
CUresult cuMemGetInfo_v2(size_t *f, size_t *t) {
	size_t now = 0;
	if (shared_add(0, &now) != 0) return 1;
	*t = capacity();
	*f = capacity() - now;
	return 0;
}

// each block carries its size in front of it
CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t bytes) {
	if (bytes == 0) return 1;
	int rc = shared_add((long long)bytes, NULL);
	if (rc != 0) return rc;
	size_t *blk = malloc(bytes + 16);
	if (!blk) {
		shared_add(-(long long)bytes, NULL);
		return 2;
	}
	blk[0] = bytes;
	*p = (CUdeviceptr)(uintptr_t)(blk + 2);
	return 0;
}
CUresult cuMemFree_v2(CUdeviceptr p) {
	size_t *blk = (size_t *)(uintptr_t)p - 2;
	shared_add(-(long long)blk[0], NULL);
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
