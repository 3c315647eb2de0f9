"""Generate the host runtime's C++ SoC table from configs/soc_profiles.yaml.

Used by setup.py and by the sanitizer build; the YAML file stays the single
source of the SoC capabilities.

    python ops_impl/tools/gen_soc_table.py configs/soc_profiles.yaml OUT.inc
"""
import sys

import yaml

FIELDS = ("memcpy_batch", "memcpy_desc", "memcpy2d_d2d", "memcpy2d_null_stream", "memcpy_desc_size",
          "malloc_extra_bytes", "max_streams", "peer_access", "event_device_use_only")


def render(table):
    default = table["default"]
    profiles = table["profiles"]
    if default not in profiles:
        raise ValueError(f"default SoC {default!r} is not one of the profiles {sorted(profiles)}")
    lines = ["// Generated from configs/soc_profiles.yaml by ops_impl/tools/gen_soc_table.py. Do not edit.",
             f'#define MS_MEMCOPY_DEFAULT_SOC "{default}"',
             "#define MS_MEMCOPY_SOC_PROFILES \\"]
    for name, prof in profiles.items():
        missing = [f for f in FIELDS if f not in prof]
        if missing:
            raise ValueError(f"SoC profile {name} lacks {missing}")
        values = ", ".join(
            ("true" if prof[f] else "false") if isinstance(prof[f], bool) else str(int(prof[f])) for f in FIELDS)
        lines.append(f'    X("{name}", {values}) \\')
    # The last continuation line needs a line after it: a backslash-newline at the end of the file is a
    # compiler warning.
    lines.append("    /* end of MS_MEMCOPY_SOC_PROFILES */")
    lines.append("")
    return "\n".join(lines)


def generate(yaml_path, out_path):
    with open(yaml_path, encoding="utf-8") as f:
        text = render(yaml.safe_load(f))
    try:
        with open(out_path, encoding="utf-8") as f:
            if f.read() == text:
                return
    except FileNotFoundError:
        pass
    with open(out_path, "w", encoding="utf-8") as f:
        f.write(text)


if __name__ == "__main__":
    generate(sys.argv[1], sys.argv[2])
