//go:build cuda

package main

/*
#cgo LDFLAGS: -ldl
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

// The few CUDA driver API types and entry points the probe needs, declared here so
// that the build needs only gcc and the libc headers (no CUDA toolkit).
typedef int CUresult;
typedef int CUdevice;
typedef void *CUcontext;
typedef void *CUmodule;
typedef void *CUfunction;
typedef void *CUstream;
typedef unsigned long long CUdeviceptr;

#define KP_CUDA_SUCCESS 0
#define KP_CUDA_ERROR_OUT_OF_MEMORY 2

typedef CUresult (*kp_cuInit)(unsigned int);
typedef CUresult (*kp_cuDriverGetVersion)(int *);
typedef CUresult (*kp_cuDeviceGetCount)(int *);
typedef CUresult (*kp_cuDeviceGet)(CUdevice *, int);
typedef CUresult (*kp_cuDeviceGetName)(char *, int, CUdevice);
typedef CUresult (*kp_cuDeviceGetUuid)(unsigned char *, CUdevice);
typedef CUresult (*kp_cuDeviceTotalMem)(size_t *, CUdevice);
typedef CUresult (*kp_cuDevicePrimaryCtxRetain)(CUcontext *, CUdevice);
typedef CUresult (*kp_cuDevicePrimaryCtxRelease)(CUdevice);
typedef CUresult (*kp_cuCtxSetCurrent)(CUcontext);
typedef CUresult (*kp_cuCtxSynchronize)(void);
typedef CUresult (*kp_cuMemGetInfo)(size_t *, size_t *);
typedef CUresult (*kp_cuMemAlloc)(CUdeviceptr *, size_t);
typedef CUresult (*kp_cuMemFree)(CUdeviceptr);
typedef CUresult (*kp_cuMemsetD8)(CUdeviceptr, unsigned char, size_t);
typedef CUresult (*kp_cuMemcpyHtoD)(CUdeviceptr, const void *, size_t);
typedef CUresult (*kp_cuMemcpyDtoH)(void *, CUdeviceptr, size_t);
typedef CUresult (*kp_cuModuleLoadData)(CUmodule *, const void *);
typedef CUresult (*kp_cuModuleGetFunction)(CUfunction *, CUmodule, const char *);
typedef CUresult (*kp_cuModuleUnload)(CUmodule);
typedef CUresult (*kp_cuLaunchKernel)(CUfunction, unsigned int, unsigned int, unsigned int,
	unsigned int, unsigned int, unsigned int, unsigned int, CUstream, void **, void **);
typedef CUresult (*kp_cuGetErrorName)(CUresult, const char **);

static struct {
	void *lib;
	kp_cuInit cuInit;
	kp_cuDriverGetVersion cuDriverGetVersion;
	kp_cuDeviceGetCount cuDeviceGetCount;
	kp_cuDeviceGet cuDeviceGet;
	kp_cuDeviceGetName cuDeviceGetName;
	kp_cuDeviceGetUuid cuDeviceGetUuid;
	kp_cuDeviceTotalMem cuDeviceTotalMem;
	kp_cuDevicePrimaryCtxRetain cuDevicePrimaryCtxRetain;
	kp_cuDevicePrimaryCtxRelease cuDevicePrimaryCtxRelease;
	kp_cuCtxSetCurrent cuCtxSetCurrent;
	kp_cuCtxSynchronize cuCtxSynchronize;
	kp_cuMemGetInfo cuMemGetInfo;
	kp_cuMemAlloc cuMemAlloc;
	kp_cuMemFree cuMemFree;
	kp_cuMemsetD8 cuMemsetD8;
	kp_cuMemcpyHtoD cuMemcpyHtoD;
	kp_cuMemcpyDtoH cuMemcpyDtoH;
	kp_cuModuleLoadData cuModuleLoadData;
	kp_cuModuleGetFunction cuModuleGetFunction;
	kp_cuModuleUnload cuModuleUnload;
	kp_cuLaunchKernel cuLaunchKernel;
	kp_cuGetErrorName cuGetErrorName;
	CUdevice dev;
	CUcontext ctx;
	CUdeviceptr hold;
} kp;

static char kp_dlerr[512];

static const char *kp_dlerror(void) { return kp_dlerr; }

static void *kp_sym(const char *a, const char *b) {
	void *p = dlsym(kp.lib, a);
	if (p == NULL && b != NULL) p = dlsym(kp.lib, b);
	return p;
}

// kp_load opens the driver library and resolves the entry points. Returns NULL on
// success, else the name of what is missing (dlerror text in kp_dlerr for the library).
static const char *kp_load(const char *path) {
	kp.lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (kp.lib == NULL) {
		const char *e = dlerror();
		strncpy(kp_dlerr, e ? e : "dlopen failed", sizeof(kp_dlerr) - 1);
		return path;
	}
#define KP_REQ(field, a, b) if ((kp.field = (kp_##field)kp_sym(a, b)) == NULL) return a
	KP_REQ(cuInit, "cuInit", NULL);
	KP_REQ(cuDriverGetVersion, "cuDriverGetVersion", NULL);
	KP_REQ(cuDeviceGetCount, "cuDeviceGetCount", NULL);
	KP_REQ(cuDeviceGet, "cuDeviceGet", NULL);
	KP_REQ(cuDeviceGetName, "cuDeviceGetName", NULL);
	KP_REQ(cuDeviceTotalMem, "cuDeviceTotalMem_v2", "cuDeviceTotalMem");
	KP_REQ(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain", NULL);
	KP_REQ(cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2", "cuDevicePrimaryCtxRelease");
	KP_REQ(cuCtxSetCurrent, "cuCtxSetCurrent", NULL);
	KP_REQ(cuCtxSynchronize, "cuCtxSynchronize", NULL);
	KP_REQ(cuMemGetInfo, "cuMemGetInfo_v2", "cuMemGetInfo");
	KP_REQ(cuMemAlloc, "cuMemAlloc_v2", "cuMemAlloc");
	KP_REQ(cuMemFree, "cuMemFree_v2", "cuMemFree");
	KP_REQ(cuMemsetD8, "cuMemsetD8_v2", "cuMemsetD8");
	KP_REQ(cuMemcpyHtoD, "cuMemcpyHtoD_v2", "cuMemcpyHtoD");
	KP_REQ(cuMemcpyDtoH, "cuMemcpyDtoH_v2", "cuMemcpyDtoH");
	KP_REQ(cuModuleLoadData, "cuModuleLoadData", NULL);
	KP_REQ(cuModuleGetFunction, "cuModuleGetFunction", NULL);
	KP_REQ(cuModuleUnload, "cuModuleUnload", NULL);
	KP_REQ(cuLaunchKernel, "cuLaunchKernel", NULL);
#undef KP_REQ
	// optional: older drivers may lack them
	kp.cuDeviceGetUuid = (kp_cuDeviceGetUuid)kp_sym("cuDeviceGetUuid_v2", "cuDeviceGetUuid");
	kp.cuGetErrorName = (kp_cuGetErrorName)kp_sym("cuGetErrorName", NULL);
	return NULL;
}

static const char *kp_error_name(CUresult r) {
	const char *s = NULL;
	if (kp.cuGetErrorName != NULL && kp.cuGetErrorName(r, &s) == KP_CUDA_SUCCESS && s != NULL) return s;
	return "CUDA_ERROR_UNRECOGNIZED";
}

static CUresult kp_init(void) { return kp.cuInit(0); }
static CUresult kp_driver_version(int *v) { return kp.cuDriverGetVersion(v); }
static CUresult kp_device_count(int *n) { return kp.cuDeviceGetCount(n); }

static CUresult kp_device_info(int ordinal, char *name, int name_len, unsigned char *uuid,
	int *has_uuid, size_t *total) {
	CUdevice d;
	CUresult r = kp.cuDeviceGet(&d, ordinal);
	if (r != KP_CUDA_SUCCESS) return r;
	if ((r = kp.cuDeviceGetName(name, name_len, d)) != KP_CUDA_SUCCESS) return r;
	if ((r = kp.cuDeviceTotalMem(total, d)) != KP_CUDA_SUCCESS) return r;
	*has_uuid = 0;
	if (kp.cuDeviceGetUuid != NULL && kp.cuDeviceGetUuid(uuid, d) == KP_CUDA_SUCCESS) *has_uuid = 1;
	return KP_CUDA_SUCCESS;
}

// kp_open makes device 0's primary context current. stage names the failing call.
static CUresult kp_open(const char **stage) {
	CUresult r;
	*stage = "cuDeviceGet";
	if ((r = kp.cuDeviceGet(&kp.dev, 0)) != KP_CUDA_SUCCESS) return r;
	*stage = "cuDevicePrimaryCtxRetain";
	if ((r = kp.cuDevicePrimaryCtxRetain(&kp.ctx, kp.dev)) != KP_CUDA_SUCCESS) return r;
	*stage = "cuCtxSetCurrent";
	return kp.cuCtxSetCurrent(kp.ctx);
}

static CUresult kp_mem_info(size_t *free_b, size_t *total_b) { return kp.cuMemGetInfo(free_b, total_b); }

// kp_matmul runs the PTX kernel on n x n float32 matrices a and b into c.
static CUresult kp_matmul(const char *ptx, const char *entry, const float *a, const float *b,
	float *c, unsigned int n, const char **stage) {
	CUresult r, r2;
	CUmodule mod = NULL;
	CUfunction fn = NULL;
	CUdeviceptr da = 0, db = 0, dc = 0;
	size_t bytes = (size_t)n * (size_t)n * sizeof(float);
	const unsigned int block = 16;
	unsigned int grid = (n + block - 1) / block;

	*stage = "cuModuleLoadData";
	if ((r = kp.cuModuleLoadData(&mod, ptx)) != KP_CUDA_SUCCESS) return r;
	*stage = "cuModuleGetFunction";
	if ((r = kp.cuModuleGetFunction(&fn, mod, entry)) != KP_CUDA_SUCCESS) goto out;
	*stage = "cuMemAlloc";
	if ((r = kp.cuMemAlloc(&da, bytes)) != KP_CUDA_SUCCESS) goto out;
	if ((r = kp.cuMemAlloc(&db, bytes)) != KP_CUDA_SUCCESS) goto out;
	if ((r = kp.cuMemAlloc(&dc, bytes)) != KP_CUDA_SUCCESS) goto out;
	*stage = "cuMemsetD8";
	// poison C so a kernel that writes nothing cannot pass by accident (0xFF.. is NaN)
	if ((r = kp.cuMemsetD8(dc, 0xFF, bytes)) != KP_CUDA_SUCCESS) goto out;
	*stage = "cuMemcpyHtoD";
	if ((r = kp.cuMemcpyHtoD(da, a, bytes)) != KP_CUDA_SUCCESS) goto out;
	if ((r = kp.cuMemcpyHtoD(db, b, bytes)) != KP_CUDA_SUCCESS) goto out;
	{
		void *params[4];
		params[0] = &da;
		params[1] = &db;
		params[2] = &dc;
		params[3] = &n;
		*stage = "cuLaunchKernel";
		r = kp.cuLaunchKernel(fn, grid, grid, 1, block, block, 1, 0, NULL, params, NULL);
		if (r != KP_CUDA_SUCCESS) goto out;
	}
	*stage = "cuCtxSynchronize";
	if ((r = kp.cuCtxSynchronize()) != KP_CUDA_SUCCESS) goto out;
	*stage = "cuMemcpyDtoH";
	r = kp.cuMemcpyDtoH(c, dc, bytes);
out:
	if (dc) kp.cuMemFree(dc);
	if (db) kp.cuMemFree(db);
	if (da) kp.cuMemFree(da);
	r2 = kp.cuModuleUnload(mod);
	if (r == KP_CUDA_SUCCESS && r2 != KP_CUDA_SUCCESS) {
		*stage = "cuModuleUnload";
		r = r2;
	}
	return r;
}

// kp_alloc tries to allocate bytes and touches them; the block is kept in kp.hold.
static CUresult kp_alloc(size_t bytes) {
	CUdeviceptr p = 0;
	CUresult r = kp.cuMemAlloc(&p, bytes);
	if (r != KP_CUDA_SUCCESS) return r;
	r = kp.cuMemsetD8(p, 0xA5, bytes);
	if (r == KP_CUDA_SUCCESS) r = kp.cuCtxSynchronize();
	if (r != KP_CUDA_SUCCESS) {
		kp.cuMemFree(p);
		return r;
	}
	kp.hold = p;
	return KP_CUDA_SUCCESS;
}

static void kp_close_hold(void) {
	if (kp.hold) {
		kp.cuMemFree(kp.hold);
		kp.hold = 0;
	}
}

static void kp_close(void) {
	kp_close_hold();
	if (kp.ctx) {
		kp.cuDevicePrimaryCtxRelease(kp.dev);
		kp.ctx = NULL;
	}
}
*/
import "C"

import (
	_ "embed"
	"fmt"
	"os"
	"unsafe"
)

const buildVariant = "cuda"

//go:embed kernel.ptx
var kernelPTX string

const kernelEntry = "kaiops_matmul"

// defaultLibcuda is the driver library the NVIDIA container toolkit mounts into GPU
// containers; GPUPROBE_LIBCUDA overrides it (tests use a fake driver).
const defaultLibcuda = "libcuda.so.1"

const mib = 1 << 20

type cudaGPU struct {
	driver  Driver
	devices []Device
}

func cudaErr(stage string, r C.CUresult) error {
	return fmt.Errorf("%s failed: %s (%d)", stage, C.GoString(C.kp_error_name(r)), int(r))
}

func formatUUID(b []byte) string {
	return fmt.Sprintf("GPU-%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// openBackend loads the CUDA driver, initialises it and makes device 0 current. Any
// failure before a context exists means "no GPU present" (with the reason).
func openBackend() (gpu, string) {
	lib := defaultLibcuda
	if v := os.Getenv("GPUPROBE_LIBCUDA"); v != "" {
		lib = v
	}
	clib := C.CString(lib)
	defer C.free(unsafe.Pointer(clib))
	if missing := C.kp_load(clib); missing != nil {
		m := C.GoString(missing)
		if m == lib {
			return nil, fmt.Sprintf("cannot load %s: %s", lib, C.GoString(C.kp_dlerror()))
		}
		return nil, fmt.Sprintf("%s has no %s", lib, m)
	}
	if r := C.kp_init(); r != 0 {
		return nil, cudaErr("cuInit", r).Error()
	}
	g := &cudaGPU{driver: Driver{Library: lib}}
	var ver C.int
	if r := C.kp_driver_version(&ver); r == 0 {
		g.driver.Version = int(ver)
	}
	var count C.int
	if r := C.kp_device_count(&count); r != 0 {
		return nil, cudaErr("cuDeviceGetCount", r).Error()
	}
	if count == 0 {
		return nil, "cuDeviceGetCount: 0 devices visible"
	}
	for i := 0; i < int(count); i++ {
		var name [256]C.char
		var uuid [16]C.uchar
		var hasUUID C.int
		var total C.size_t
		r := C.kp_device_info(C.int(i), &name[0], C.int(len(name)), &uuid[0], &hasUUID, &total)
		if r != 0 {
			return nil, cudaErr(fmt.Sprintf("device %d info", i), r).Error()
		}
		d := Device{Index: i, Name: C.GoString(&name[0]), TotalMemoryMiB: int64(total) / mib}
		if hasUUID != 0 {
			d.UUID = formatUUID(C.GoBytes(unsafe.Pointer(&uuid[0]), 16))
		}
		g.devices = append(g.devices, d)
	}
	var stage *C.char
	if r := C.kp_open(&stage); r != 0 {
		C.kp_close()
		return nil, cudaErr(C.GoString(stage), r).Error()
	}
	var free, total C.size_t
	if r := C.kp_mem_info(&free, &total); r == 0 {
		g.driver.FreeMemoryMiB = int64(free) / mib
	}
	return g, ""
}

func (g *cudaGPU) Driver() Driver    { return g.driver }
func (g *cudaGPU) Devices() []Device { return g.devices }
func (g *cudaGPU) Close()            { C.kp_close() }

func (g *cudaGPU) MatMul(a, b []float32, n int) ([]float32, error) {
	if len(a) != n*n || len(b) != n*n {
		return nil, fmt.Errorf("matmul: inputs are not %d x %d", n, n)
	}
	c := make([]float32, n*n)
	ptx := C.CString(kernelPTX)
	defer C.free(unsafe.Pointer(ptx))
	entry := C.CString(kernelEntry)
	defer C.free(unsafe.Pointer(entry))
	var stage *C.char
	r := C.kp_matmul(ptx, entry, (*C.float)(unsafe.Pointer(&a[0])), (*C.float)(unsafe.Pointer(&b[0])),
		(*C.float)(unsafe.Pointer(&c[0])), C.uint(n), &stage)
	if r != 0 {
		return nil, cudaErr(C.GoString(stage), r)
	}
	return c, nil
}

// Alloc asks for mib MiB; when the driver is out of memory it halves the step until an
// allocation succeeds, so the result is close to the largest block it could get.
func (g *cudaGPU) Alloc(want int) (int, error) {
	if r := C.kp_alloc(C.size_t(want) * mib); r == 0 {
		return want, nil
	} else if r != C.KP_CUDA_ERROR_OUT_OF_MEMORY {
		return 0, cudaErr("cuMemAlloc", r)
	}
	first := cudaErr("cuMemAlloc", C.KP_CUDA_ERROR_OUT_OF_MEMORY)
	// binary search for the largest size in MiB that succeeds
	lo, hi := 0, want
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		if r := C.kp_alloc(C.size_t(mid) * mib); r == 0 {
			C.kp_close_hold()
			lo = mid
		} else {
			hi = mid
		}
	}
	if lo == 0 {
		return 0, fmt.Errorf("%v for %d MiB; no smaller block succeeded either", first, want)
	}
	if r := C.kp_alloc(C.size_t(lo) * mib); r != 0 {
		return 0, cudaErr("cuMemAlloc", r)
	}
	return lo, fmt.Errorf("%v for %d MiB; got %d MiB", first, want, lo)
}
