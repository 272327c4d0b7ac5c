# Cross-compiling for Windows x64 with mingw-w64 (Debian: gcc-mingw-w64-x86-64);
# ctest runs the .exe files under wine (Debian: wine, wine64).
#   cmake -S . -B build/cmake-mingw -DCMAKE_TOOLCHAIN_FILE=cmake/mingw-w64-x86_64.cmake
set(CMAKE_SYSTEM_NAME Windows)
set(CMAKE_SYSTEM_PROCESSOR x86_64)
set(CMAKE_C_COMPILER x86_64-w64-mingw32-gcc)
set(CMAKE_RC_COMPILER x86_64-w64-mingw32-windres)
set(CMAKE_FIND_ROOT_PATH /usr/x86_64-w64-mingw32)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
# wine64 where Debian installs it as its own command, else wine (which runs
# 64-bit programs too).
find_program(ML_WINE NAMES wine64 wine)
if(ML_WINE)
  set(CMAKE_CROSSCOMPILING_EMULATOR ${ML_WINE})
endif()
