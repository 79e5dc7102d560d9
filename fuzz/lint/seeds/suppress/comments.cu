// gpumem-lint: ignore[GM001,GM006] reason
int a; /* gpumem-lint: ignore */
const char *s = "// gpumem-lint: ignore";
auto r = R"x(/* gpumem-lint: ignore-file */)x";
// gpumem-lint: ignore-file[GM003]
#define X \
 // gpumem-lint: ignore[*]
char c = '"';
