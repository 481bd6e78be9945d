// ICU from Debian's libicu-dev. Only the C shim calls it: ICU renames every function with a
// version suffix through macros (uspoof_open → uspoof_open_72), which Swift cannot follow.
#include <unicode/uspoof.h>
