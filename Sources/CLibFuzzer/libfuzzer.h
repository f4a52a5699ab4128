// libFuzzer's driver, for fuzz targets that keep their own main (see scripts/fuzz). The
// definition comes from compiler-rt's libclang_rt.fuzzer_no_main, linked only by scripts/fuzz.
#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerRunDriver(int *argc, char ***argv, int (*callback)(const uint8_t *data, size_t size));
