"""The server's routes, one APIRouter per concern; :func:`omnistudio.server.factory.build_server` includes them."""
