# Turns codegen/prelude.cuh into a C file defining fcx_prelude_source (its bytes and a NUL) and
# fcx_prelude_size (the bytes without the NUL), declared in codegen/prelude.h. A line
# '#include "../graph/NAME.h"' is replaced by that file's text: code the host and the device
# share (graph/normal32.h) is written once, and NVRTC, which is given no headers, sees it inline.
# Run as: cmake -DIN=<prelude.cuh> -DOUT=<file.c> -P embed_prelude.cmake
# Another device source embeds the same way under another name: -DNAME=fcx_sort_kernels (it then
# defines fcx_sort_kernels_source and fcx_sort_kernels_size, declared in codegen/prelude.h).
cmake_minimum_required(VERSION 3.20) # script mode: the policies while() needs
if(NOT NAME)
  set(NAME fcx_prelude)
endif()
get_filename_component(in_name "${IN}" NAME)
file(READ "${IN}" text)
get_filename_component(dir "${IN}" DIRECTORY)
while(TRUE)
  string(REGEX MATCH "#include \"\\.\\./graph/[A-Za-z0-9_]+\\.h\"[^\n]*" line "${text}")
  if(NOT line)
    break()
  endif()
  string(REGEX REPLACE "#include \"([^\"]+)\".*" "\\1" rel "${line}")
  file(READ "${dir}/${rel}" shared)
  string(REPLACE "${line}" "${shared}" text "${text}")
endwhile()
file(WRITE "${OUT}.src" "${text}")
file(READ "${OUT}.src" hex HEX)
file(REMOVE "${OUT}.src")
string(LENGTH "${hex}" nhex)
math(EXPR size "${nhex} / 2")
# 16 bytes a line: "0x2f,0x2a,..."
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
string(REPEAT "0x[0-9a-f][0-9a-f]," 16 line)
string(REGEX REPLACE "(${line})" "\\1\n    " bytes "${bytes}")
file(WRITE "${OUT}.tmp"
  "/* Generated from codegen/${in_name} by cmake/embed_prelude.cmake. Do not edit. */\n"
  "#include \"prelude.h\"\n\n"
  "const char ${NAME}_source[] = {\n    ${bytes}0x00\n};\n"
  "const size_t ${NAME}_size = ${size};\n")
# Only a changed file is rewritten, so an unchanged prelude rebuilds nothing.
configure_file("${OUT}.tmp" "${OUT}" COPYONLY)
file(REMOVE "${OUT}.tmp")
