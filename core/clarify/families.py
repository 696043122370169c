"""The five ClarifyRL task families as data: fields, vocabularies, simulator phrasing.

These are facts of the published environment (field names, value vocabularies, keyword lists,
answer phrasings, request templates); keeping them in one frozen table lets the scenario
generator, the simulated user and both rubric versions read the same truth.
"""
from dataclasses import dataclass
from types import MappingProxyType
from typing import Mapping

DIFFICULTIES = ("easy", "medium", "hard")
MAX_QUESTIONS = 6
QUESTION_CHAR_CAP = 200
PROFILE_SIZE = {"easy": (2, 3), "medium": (4, 5), "hard": (6, 7)}
"""Inclusive (lo, hi) range of hidden-profile sizes per difficulty."""
MIN_CRITICAL = {"easy": 2, "medium": 3, "hard": 4}
MAX_STEPS = {"easy": 8, "medium": 10, "hard": 12}
TITLES = {"easy": "Mild Ambiguity", "medium": "Moderate Ambiguity", "hard": "High Ambiguity"}

SYNONYM_SETS: tuple[frozenset[str], ...] = (
    frozenset(('veg', 'vegetarian')),
    frozenset(('google meet', 'gmeet', 'meet')),
    frozenset(('in person', 'inperson', 'offline')),
)
"""Values that FieldMatch treats as equal after normalisation."""


@dataclass(frozen=True)
class Field:
    """One hidden-profile slot: its vocabulary and how the simulated user talks about it."""

    name: str
    values: tuple
    """Vocabulary, in published order (strings, or ints for counts and minutes)."""
    keywords: tuple[str, ...]
    """Lower-case substrings that make the simulated user reveal this field."""
    phrasing: str
    """Answer template with a ``{value}`` slot."""


@dataclass(frozen=True)
class Family:
    """A task family: which fields exist, which matter, which a plan must hold."""

    name: str
    fields: tuple[str, ...]
    """All fields of the family, in published order."""
    critical: tuple[str, ...]
    """Critical fields, in published order (weight 2 in FieldMatch)."""
    required: tuple[str, ...]
    """Keys every plan must carry to pass the format gate."""
    requests: tuple[str, ...]
    """Vague one-line request templates."""
    no_match_reply: str
    """What the simulated user says when a question matches no field."""

FIELDS: Mapping[str, Field] = MappingProxyType({
    'stack': Field(
        'stack',
        values=('python+fastapi', 'node+express', 'go+gin', 'rust+axum', 'ruby+rails'),
        keywords=('stack', 'language', 'framework', 'tech', 'what to build it in'),
        phrasing="I'd like to use {value}",
    ),
    'scale': Field(
        'scale',
        values=('<100 users', '1k users', '10k users', '1M users'),
        keywords=('scale', 'users', 'traffic', 'load', 'rps', 'concurrent'),
        phrasing='Expecting around {value}',
    ),
    'auth': Field(
        'auth',
        values=('none', 'api-key', 'jwt', 'oauth2', 'saml-sso'),
        keywords=('auth', 'authentication', 'login', 'sso', 'jwt', 'oauth'),
        phrasing='Auth should be {value}',
    ),
    'datastore': Field(
        'datastore',
        values=('postgres', 'mysql', 'mongodb', 'sqlite', 'redis-only'),
        keywords=('database', 'db', 'storage', 'persist', 'data store'),
        phrasing='Use {value}',
    ),
    'deployment_target': Field(
        'deployment_target',
        values=('aws-lambda', 'kubernetes', 'fly.io', 'heroku', 'on-prem'),
        keywords=('deploy', 'host', 'hosting', 'cloud', 'aws', 'kubernetes', 'where to run'),
        phrasing='Deploy to {value}',
    ),
    'language_version': Field(
        'language_version',
        values=('python3.11', 'python3.12', 'node18', 'node20'),
        keywords=('version', 'python version', 'node version', 'runtime version'),
        phrasing='Use {value}',
    ),
    'test_coverage': Field(
        'test_coverage',
        values=('none', 'unit-only', 'unit+integration', 'full-e2e'),
        keywords=('test', 'coverage', 'testing', 'qa'),
        phrasing='{value} tests',
    ),
    'primary_symptom': Field(
        'primary_symptom',
        values=('headache', 'fever', 'cough', 'fatigue', 'nausea', 'rash', 'pain'),
        keywords=('symptom', "what's wrong", 'what hurts', 'how do you feel', 'what is the issue'),
        phrasing="It's a {value}",
    ),
    'duration': Field(
        'duration',
        values=('<1 hour', '1-24 hours', '1-7 days', '1-4 weeks', 'chronic'),
        keywords=('how long', 'since when', 'duration', 'when did', 'started'),
        phrasing='About {value}',
    ),
    'severity': Field(
        'severity',
        values=('mild', 'moderate', 'severe'),
        keywords=('severe', 'mild', 'intense', 'how bad', 'severity', 'scale of pain'),
        phrasing="I'd say {value}",
    ),
    'age_band': Field(
        'age_band',
        values=('child', 'teen', 'adult', 'senior'),
        keywords=('age', 'how old', 'young', 'elderly', 'child', 'adult'),
        phrasing="I'm a {value}",
    ),
    'prior_conditions': Field(
        'prior_conditions',
        values=('none', 'diabetes', 'hypertension', 'asthma', 'other'),
        keywords=('history', 'prior condition', 'medical history', 'pre-existing', 'chronic'),
        phrasing='{value}',
    ),
    'medications': Field(
        'medications',
        values=('none', 'prescription', 'otc', 'both'),
        keywords=('medication', 'meds', 'drugs', 'prescription', 'taking anything'),
        phrasing='{value}',
    ),
    'order_id': Field(
        'order_id',
        values=('#4521', '#7830', '#1199', '#9027', 'none-provided'),
        keywords=('order id', 'order number', 'order #', 'reference', 'tracking', 'which order'),
        phrasing='Order {value}',
    ),
    'item_issue': Field(
        'item_issue',
        values=('wrong-item', 'damaged', 'missing', 'late', 'never-arrived'),
        keywords=("what's wrong with", 'what happened', 'damaged', 'missing', 'wrong', 'issue with the order', 'problem with'),
        phrasing='{value}',
    ),
    'refund_or_replace': Field(
        'refund_or_replace',
        values=('refund', 'replace', 'store-credit', 'unsure'),
        keywords=('refund', 'replace', 'return', 'credit', 'what would you like', 'resolution'),
        phrasing="I'd prefer a {value}",
    ),
    'urgency': Field(
        'urgency',
        values=('low', 'medium', 'high'),
        keywords=('when do you need', 'need by', 'urgent', 'asap', 'how soon', 'urgency'),
        phrasing='Urgency is {value}',
    ),
    'channel_preferred': Field(
        'channel_preferred',
        values=('email', 'phone', 'chat'),
        keywords=('contact', 'reach you', 'email or phone', 'how should we', 'channel'),
        phrasing='Please reach me by {value}',
    ),
    'participants': Field(
        'participants',
        values=('whole team', 'just me and X', 'leadership', 'external client'),
        keywords=('who', 'participants', 'attend', 'join', 'invite', 'attendees'),
        phrasing='{value}',
    ),
    'date': Field(
        'date',
        values=('today', 'tomorrow', 'this week', 'next week'),
        keywords=('what day', 'which day', 'date', 'when (day)', 'what date'),
        phrasing='{value}',
    ),
    'time': Field(
        'time',
        values=('morning', 'afternoon', 'evening', 'flexible'),
        keywords=('what time', 'which time', 'hour', 'morning or afternoon'),
        phrasing='{value}',
    ),
    'duration_minutes': Field(
        'duration_minutes',
        values=(15, 30, 45, 60, 90),
        keywords=('how long', 'duration', 'minutes', 'length'),
        phrasing='{value} minutes',
    ),
    'platform': Field(
        'platform',
        values=('zoom', 'google-meet', 'in-person', 'phone'),
        keywords=('zoom', 'platform', 'in person', 'in-person', 'where (online)', 'virtual or'),
        phrasing='{value}',
    ),
    'event_type': Field(
        'event_type',
        values=('birthday', 'farewell', 'anniversary', 'team-building', 'baby-shower'),
        keywords=('what kind of event', 'kind', 'type of event', 'occasion'),
        phrasing='A {value}',
    ),
    'guest_count': Field(
        'guest_count',
        values=(5, 10, 20, 50, 100),
        keywords=('how many', 'guest', 'headcount', 'size', 'people'),
        phrasing='About {value} people',
    ),
    'venue': Field(
        'venue',
        values=('restaurant', 'home', 'office', 'outdoor', 'rented hall'),
        keywords=('where', 'venue', 'location', 'place'),
        phrasing='At a {value}',
    ),
    'budget_band': Field(
        'budget_band',
        values=('<$100', '$100-500', '$500-2000', '$2000+'),
        keywords=('budget', 'cost', 'spend', 'price', 'how much'),
        phrasing='Budget around {value}',
    ),
    'theme': Field(
        'theme',
        values=('casual', 'formal', 'themed', 'surprise'),
        keywords=('theme', 'vibe', 'style', 'formal or casual'),
        phrasing='{value}',
    ),
    'dietary_constraints': Field(
        'dietary_constraints',
        values=('none', 'vegetarian', 'vegan', 'mixed'),
        keywords=('diet', 'vegetarian', 'vegan', 'food restriction', 'allergies', 'dietary'),
        phrasing='{value}',
    ),
})

FAMILIES: Mapping[str, Family] = MappingProxyType({
    'coding_requirements': Family(
        'coding_requirements',
        fields=('stack', 'scale', 'auth', 'datastore', 'deployment_target', 'language_version', 'test_coverage'),
        critical=('stack', 'scale', 'auth', 'datastore', 'deployment_target'),
        required=('stack', 'scale', 'auth', 'datastore'),
        requests=('Build me an API.', 'Write a service for me.', 'I need a backend.', 'Set up an endpoint.', 'Make me a web service.'),
        no_match_reply="I don't have a strong preference on that — pick something reasonable.",
    ),
    'medical_intake': Family(
        'medical_intake',
        fields=('primary_symptom', 'duration', 'severity', 'age_band', 'prior_conditions', 'medications'),
        critical=('primary_symptom', 'duration', 'severity', 'age_band'),
        required=('primary_symptom', 'duration', 'severity'),
        requests=("I'm not feeling well.", "Something's off with my health.", 'I have a problem.', 'I need some help.'),
        no_match_reply="I'm not sure about that, sorry.",
    ),
    'support_triage': Family(
        'support_triage',
        fields=('order_id', 'item_issue', 'refund_or_replace', 'urgency', 'channel_preferred'),
        critical=('order_id', 'item_issue', 'refund_or_replace', 'urgency'),
        required=('order_id', 'item_issue', 'refund_or_replace'),
        requests=('My order is wrong.', "There's an issue with my purchase.", 'Something went wrong.', 'I need help with an order.'),
        no_match_reply="I don't really know — does it matter?",
    ),
    'meeting_scheduling': Family(
        'meeting_scheduling',
        fields=('participants', 'date', 'time', 'duration_minutes', 'platform'),
        critical=('participants', 'date', 'time', 'duration_minutes'),
        required=('participants', 'date', 'time'),
        requests=('Schedule a sync.', 'Set up a meeting.', 'Get a call on the calendar.'),
        no_match_reply='No preference, you choose.',
    ),
    'event_planning': Family(
        'event_planning',
        fields=('event_type', 'guest_count', 'venue', 'date', 'budget_band', 'theme', 'dietary_constraints'),
        critical=('event_type', 'guest_count', 'date', 'venue'),
        required=('event_type', 'date', 'guest_count', 'venue'),
        requests=('Plan a birthday party.', 'Organize a team event.', 'Set up a celebration.'),
        no_match_reply='Up to you on that one.',
    ),
})
"""Families in published order; the generator draws from this order."""


RUBRIC_WEIGHTS = {"FieldMatch": 0.50, "InfoGain": 0.20, "QuestionEfficiency": 0.15, "HallucinationCheck": 0.15}
GATE_THRESHOLD = 0.5
CRITICAL_WEIGHT, OTHER_WEIGHT = 2.0, 1.0
ASK_REWARDS = {"revealed_new_field": 0.05, "no_field_matched": 0.02, "duplicate_field": -0.02, "over_budget": -0.05}
"""Per-step rewards of ask_question."""
