// zxcvbn-c from Debian's libzxcvbn-dev, dictionaries compiled in.
#include <zxcvbn.h>
