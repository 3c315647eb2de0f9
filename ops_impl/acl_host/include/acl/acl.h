/*
 * ms_memcopy host ACL runtime: umbrella header.
 *
 * Declares the AscendCL runtime subset implemented by the host runtime
 * (libascendcl.so in the ms_memcopy package), with the prototypes, enum
 * values and struct layouts of CANN 9.1. Code written against AscendCL for
 * these calls builds unchanged against this directory.
 */
#ifndef MS_MEMCOPY_ACL_ACL_H_
#define MS_MEMCOPY_ACL_ACL_H_

#include "acl_rt.h"

#endif  // MS_MEMCOPY_ACL_ACL_H_
