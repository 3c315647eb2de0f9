// Visibility of libms_memcopy_kernels.so's C++ interface.
//
// The library is built with -fvisibility=hidden. The declarations marked MSMC_KERNELS_API are
// exported because another shared object links against them: the CustomOpBuilder entry layer
// (ms_extension/), built by MindSpore's CustomOpBuilder, calls the op bodies, launch context and
// descriptor copier, and shares the library's HostBuffer table and ACL runtime with Python.
#ifndef MS_MEMCOPY_KERNELS_KERNELS_API_H_
#define MS_MEMCOPY_KERNELS_KERNELS_API_H_

#define MSMC_KERNELS_API __attribute__((visibility("default")))

#endif  // MS_MEMCOPY_KERNELS_KERNELS_API_H_
