# Writes OUT, a C file defining `const char NAME[]` with the bytes of IN and a final 0: the
# report page's template files become part of the `gpumem` binary, and stay real HTML, CSS and
# JavaScript files in the source tree (editable and lintable as what they are).
# Usage: cmake -DIN=file -DOUT=file.c -DNAME=symbol -P embed.cmake
file(READ "${IN}" hex HEX)
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
string(REGEX REPLACE "(0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,)" "\\1\n" bytes "${bytes}")
get_filename_component(name_only "${IN}" NAME)
file(WRITE "${OUT}" "/* Generated from ${name_only} by embed.cmake: do not edit. */\nconst char ${NAME}[] = {\n${bytes}0};\n")
