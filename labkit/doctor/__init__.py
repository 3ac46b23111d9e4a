"""``labkit doctor``: can this machine run the model, the sandbox and the servers, and what to do if not."""
