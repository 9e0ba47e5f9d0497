// The bolt-pack library version. Kept in sync with project(VERSION) in the
// top-level CMakeLists.txt: cmake/install.cmake refuses to configure when
// they disagree.
#ifndef BOLTPACK_VERSION_H_
#define BOLTPACK_VERSION_H_

#define BOLTPACK_VERSION_MAJOR 0
#define BOLTPACK_VERSION_MINOR 1
#define BOLTPACK_VERSION_PATCH 0
#define BOLTPACK_VERSION_STRING "0.1.0"
// One comparable number: MAJOR * 10000 + MINOR * 100 + PATCH.
#define BOLTPACK_VERSION \
  (BOLTPACK_VERSION_MAJOR * 10000 + BOLTPACK_VERSION_MINOR * 100 + BOLTPACK_VERSION_PATCH)

#endif  // BOLTPACK_VERSION_H_
