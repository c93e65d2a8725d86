"""Provider batch APIs behind the reply cache: what a provider's batch API must offer
(:mod:`.protocol`), the durable journal of submitted batches (:mod:`.journal`), submitting, waiting and
collecting (:mod:`.runner`) and dependent requests sent in rounds (:mod:`.rounds`)."""
