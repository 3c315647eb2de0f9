"""The ACL layer every part of ms_memcopy calls through: ``library`` (loading libascendcl and its
prototypes), ``runtime`` (the calls raising AclError: ``ms_memcopy.runtime``; ``host_extras``, the host
runtime's own calls; ``call``, how both call), ``convert`` (their argument conversions), ``constants``
(ACL_* values), ``error_codes`` (the code table of the shipped headers) and ``limits`` (the documented
limits of the copy calls). ``ms_memcopy.acl`` is the same calls in pyACL's conventions (``_pyacl``).
Importing this package imports nothing.
"""
