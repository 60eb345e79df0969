"""One resolver for every external resource. See :mod:`capeval.resources.resolver`."""
from .resolver import ResourceSpec, register_resource, resolve, list_resources

__all__ = ["ResourceSpec", "register_resource", "resolve", "list_resources"]
