"""The implementation of ``ms_memcopy.acl`` (pyACL's conventions), kept out of its namespaces.

``ms_memcopy.acl``, ``acl.rt`` and ``acl.util`` re-export the functions defined here, so that, as in
pyACL, their ``dir()`` lists the calls and nothing else.
"""
