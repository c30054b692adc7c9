/* A benchmark plugin on the C SDK: a rewriter that changes nothing, to
 * measure the cost of a call itself. */
#include "quarry.h"

static const char *noop(const quarry_rewrite_request *req, quarry_rewrite_response *resp) {
	(void)req;
	(void)resp;
	return 0;
}

QUARRY_REWRITER(noop)
