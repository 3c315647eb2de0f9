/*
 * ms_memcopy host ACL runtime: runtime-layer error codes (values of CANN 9.1).
 * The ACL wrapper returns 1xxxxx for the checks it makes itself; everything
 * the runtime layer rejects comes back as one of these.
 */
#ifndef MS_MEMCOPY_ACL_RT_ERROR_CODES_H_
#define MS_MEMCOPY_ACL_RT_ERROR_CODES_H_

#define ACL_ERROR_RT_PARAM_INVALID 107000
#define ACL_ERROR_RT_INVALID_DEVICEID 107001
#define ACL_ERROR_RT_CONTEXT_NULL 107002
#define ACL_ERROR_RT_STREAM_CONTEXT 107003
#define ACL_ERROR_RT_ADDR_UNALIGNED 107008
#define ACL_ERROR_RT_INVALID_MEMORY_TYPE 107016

#define ACL_ERROR_RT_FEATURE_NOT_SUPPORT 207000
#define ACL_ERROR_RT_MEMORY_ALLOCATION 207001
#define ACL_ERROR_RT_DEVICE_OOM 207018

#define ACL_ERROR_RT_INTERNAL_ERROR 507000
#define ACL_ERROR_RT_STREAM_SYNC_TIMEOUT 507046

#endif  // MS_MEMCOPY_ACL_RT_ERROR_CODES_H_
