// libpq, PostgreSQL's own client library (Debian's libpq-dev), for StrataPostgres.
#include <libpq-fe.h>
